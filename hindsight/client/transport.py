"""How the client talks to a server: each call is a flow, a generator that yields requests and turns the answers into
results; one blocking and one async driver run every flow, so no call is written twice. Error bodies come back as
the typed errors the embedded engine raises."""

from __future__ import annotations

import asyncio
import keyword
import logging
import threading
from collections.abc import Awaitable, Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError

from hindsight import errors
from hindsight.errors import HindsightError, InvalidInputError, ServerUnreachableError
from hindsight.server.schemas import ErrorBody, ErrorInfo

log = logging.getLogger(__name__)
T = TypeVar("T")
B = TypeVar("B", bound=BaseModel)
P = ParamSpec("P")
Param = str | int | float


@dataclass(frozen=True)
class Request:
    """One HTTP request of a call: the method, the path under the server's URL, and a query, a JSON body or bytes."""

    method: str
    path: str
    params: dict[str, Param] = field(default_factory=dict)
    body: BaseModel | None = None
    content: bytes | None = None
    content_type: str | None = None
    hold_s: float = 0.0  # how long the server may hold the request (a long poll): added to the read timeout


# A call: yields its requests, is sent each answer (or thrown its typed error), and returns the result.
Flow = Generator[Request, httpx.Response, T]

# Every typed error by the name an error body gives it.
_TYPED = {name: cls for name, cls in vars(errors).items() if isinstance(cls, type) and issubclass(cls, HindsightError)}


def path(*segments: str) -> str:
    """`/v1/...` with each segment escaped (an id never reaches another route)."""
    return "/v1/" + "/".join(quote(s, safe="") for s in segments)


def iso(value: datetime | str | None) -> str | None:
    """A time argument as the API takes it: ISO 8601 text (a naive datetime stays naive: the bank's time zone)."""
    return value.isoformat() if isinstance(value, datetime) else value


def body(model: type[B], **fields: Any) -> B:
    """A request body, checked here: a bad argument is InvalidInputError before anything is sent."""
    try:
        return model(**fields)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()[:5])
        raise InvalidInputError(problems) from None


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def _adapter(into: Any) -> TypeAdapter[Any]:
    if into not in _ADAPTERS:
        _ADAPTERS[into] = TypeAdapter(into)
    return _ADAPTERS[into]


def decode(response: httpx.Response, into: type[T]) -> T:
    """The answer as the library's own model (or dataclass)."""
    try:
        value: T = _adapter(into).validate_json(response.content)
    except ValidationError as exc:
        raise HindsightError(f"{response.request.method} {response.request.url.path}: the server's answer is not a "
                             f"{getattr(into, '__name__', into)} ({exc.error_count()} problems): is it another "
                             "version of hindsight?") from None
    return value


def call(request: Request, into: type[T]) -> Flow[T]:
    """The flow of a call that is one request."""
    response = yield request
    return decode(response, into)


def typed_error(info: ErrorInfo, where: str = "") -> HindsightError:
    """The engine's error of an error body's type; HindsightError, naming the type (and `where`), for one this
    library lacks (e.g. NotFoundError: a route this server does not have)."""
    cls = _TYPED.get(info.type)
    return cls(info.message) if cls is not None else HindsightError(f"{info.type}: {info.message} {where}".strip())


# What a request comes to: the answer, or the typed error of an error answer (which its flow may catch).
Answer = httpx.Response | HindsightError


def _error(response: httpx.Response) -> HindsightError:
    """The typed error of an error answer."""
    where = f"({response.request.method} {response.request.url.path}: HTTP {response.status_code})"
    try:
        return typed_error(ErrorBody.model_validate_json(response.content).error, where)
    except ValidationError:  # not the API's error body: a proxy's page, another service
        return HindsightError(f"{where} {response.text[:200]!r}")


def _answer(response: httpx.Response) -> Answer:
    return response if response.is_success else _error(response)


class Running(Generic[T]):
    """A flow under way: `request` is what it waits for, None once it returned its `result` (or raised)."""

    def __init__(self, flow: Flow[T]) -> None:
        self._flow = flow
        self._done: list[T] = []
        self.request: Request | None = None
        self.answer(None)

    def answer(self, answer: Answer | None) -> None:
        """Hand the flow the answer to its request (throw it the error); it asks its next one, or ends."""
        try:
            if answer is None:
                self.request = next(self._flow)
            elif isinstance(answer, HindsightError):
                self.request = self._flow.throw(answer)
            else:
                self.request = self._flow.send(answer)
        except StopIteration as done:
            self.request, self._done = None, [done.value]

    @property
    def result(self) -> T:
        return self._done[0]


class Lines:
    """Text lines from chunks of bytes, split on '\\n' only (JSON Lines may hold U+2028 and friends), each kept with
    its newline."""

    def __init__(self) -> None:
        self._rest = b""

    def feed(self, chunk: bytes) -> list[str]:
        *whole, self._rest = (self._rest + chunk).split(b"\n")
        return [line.decode("utf-8") + "\n" for line in whole]

    def end(self) -> list[str]:
        return [self._rest.decode("utf-8")] if self._rest else []


class Transport:
    """The HTTP clients of one HindsightClient: a blocking one, and an async one for the running event loop."""

    def __init__(self, url: str, api_key: str | None, timeout: float, page_size: int) -> None:
        if not url.startswith(("http://", "https://")):
            raise InvalidInputError(f"the server URL must start with http:// or https://, got {url!r}")
        self.url = url.rstrip("/")
        self.page_size = page_size
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout
        self._lock = threading.Lock()
        self._client: httpx.Client | None = None
        self._aclient: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def client(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(base_url=self.url, headers=self._headers, timeout=self._timeout)
            return self._client

    def aclient(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        with self._lock:
            # Connections belong to the loop that opened them: another loop (a second asyncio.run) gets its own.
            if self._aclient is None or self._loop is not loop:
                self._aclient = httpx.AsyncClient(base_url=self.url, headers=self._headers, timeout=self._timeout)
                self._loop = loop
            return self._aclient

    def _build(self, client: httpx.Client | httpx.AsyncClient, request: Request) -> httpx.Request:
        log.debug("%s %s", request.method, request.path)
        headers = {"Content-Type": request.content_type} if request.content_type else None
        return client.build_request(
            request.method, request.path, params=request.params or None, headers=headers, content=request.content,
            json=request.body.model_dump(mode="json") if request.body is not None else None,
            timeout=httpx.Timeout(self._timeout, read=self._timeout + request.hold_s))

    @contextmanager
    def _reaching(self) -> Iterator[None]:
        """A failure to reach the server becomes ServerUnreachableError."""
        try:
            yield
        except httpx.TransportError as exc:
            raise ServerUnreachableError(f"no answer from the hindsight server at {self.url}: "
                                         f"{type(exc).__name__}: {exc}") from exc

    def _ask(self, request: Request) -> Answer:
        client = self.client()
        with self._reaching():
            return _answer(client.send(self._build(client, request)))

    async def _aask(self, request: Request) -> Answer:
        client = self.aclient()
        with self._reaching():
            return _answer(await client.send(self._build(client, request)))

    def run(self, flow: Flow[T]) -> T:
        """Run a flow to its result, blocking."""
        running = Running(flow)
        while running.request is not None:
            running.answer(self._ask(running.request))
        return running.result

    async def arun(self, flow: Flow[T]) -> T:
        """Run a flow to its result on the event loop."""
        running = Running(flow)
        while running.request is not None:
            running.answer(await self._aask(running.request))
        return running.result

    def stream(self, request: Request) -> Iterator[str]:
        """The answer's lines as they arrive. The status is checked here, before the first line is asked for."""
        client = self.client()
        with self._reaching():
            response = client.send(self._build(client, request), stream=True)
        if not response.is_success:
            response.read()
            response.close()
            raise _error(response)
        return self._lines(response)

    def _lines(self, response: httpx.Response) -> Iterator[str]:
        lines = Lines()
        try:
            with self._reaching():
                for chunk in response.iter_bytes():
                    yield from lines.feed(chunk)
            yield from lines.end()
        finally:
            response.close()

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        with self._lock:
            aclient, loop, self._aclient, self._loop = self._aclient, self._loop, None, None
        if aclient is not None and loop is asyncio.get_running_loop():  # another loop's connections died with it
            await aclient.aclose()
        self.close()


class Remote(Protocol):
    """What the methods `blocking` and `awaiting` make run their flows on."""

    _transport: Transport


S = TypeVar("S", bound=Remote)


def _named(method: Callable[..., Any], flow: Callable[..., Any], prefix: str) -> None:
    name = prefix + flow.__name__.lstrip("_")
    name += "_" if keyword.iskeyword(name) else ""  # the twin of `wait` is `await_`
    method.__name__ = name
    method.__qualname__ = f"{flow.__qualname__.rsplit('.', 1)[0]}.{name}"
    method.__doc__ = flow.__doc__


def blocking(flow: Callable[Concatenate[S, P], Flow[T]]) -> Callable[Concatenate[S, P], T]:
    """`name = blocking(_name)` in a class body: the call `_name` describes, run to its result."""

    def method(obj: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return obj._transport.run(flow(obj, *args, **kwargs))

    _named(method, flow, "")
    return method


def awaiting(flow: Callable[Concatenate[S, P], Flow[T]]) -> Callable[Concatenate[S, P], Awaitable[T]]:
    """`aname = awaiting(_name)` in a class body: the same call, awaited."""

    async def method(obj: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await obj._transport.arun(flow(obj, *args, **kwargs))

    _named(method, flow, "a")
    return method


def joined(lines: Iterable[str | bytes] | str | bytes) -> bytes:
    """Lines (or one text holding them) as one body, each line ending in a newline."""
    if isinstance(lines, str | bytes):
        lines = [lines]
    parts = [line.encode("utf-8") if isinstance(line, str) else line for line in lines]
    return b"".join(p if p.endswith(b"\n") else p + b"\n" for p in parts if p)
