.PHONY: setup demo test lint bench

setup:
	bash scripts/setup.sh

demo: setup
	HF_HUB_OFFLINE=1 .venv/bin/python -m hindsight.demo

test: setup
	HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q

lint: setup
	.venv/bin/ruff check hindsight tests eval bench
	.venv/bin/mypy hindsight
