.PHONY: setup local demo test lint

# hindsight with its offline embedding and NER models: enough for retain and recall, and for the demo.
setup:
	bash scripts/setup.sh

# Everything: the local-LLM runtime (llama-cpp-python, built from source), qwen-1.5b (the local model that reflects
# best, docs/DECISIONS.md) and the tools of the tests and benchmarks: about 8 minutes on 2 cores. The demo reflects
# once this is installed.
local:
	bash scripts/setup.sh full

demo: setup
	HF_HUB_OFFLINE=1 .venv/bin/python -m hindsight.demo

test: local
	HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q --durations=25

lint: local
	.venv/bin/ruff check hindsight tests eval bench
	.venv/bin/mypy hindsight
