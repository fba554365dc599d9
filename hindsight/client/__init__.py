"""The Python client of `hindsight serve`: `HindsightClient(url)` has the surface of the embedded `Hindsight`."""

from hindsight.client.bank import RemoteBank
from hindsight.client.client import HindsightClient
from hindsight.server.schemas import Operation

__all__ = ["HindsightClient", "Operation", "RemoteBank"]
