.PHONY: setup demo test lint bench

setup:
	bash scripts/setup.sh

demo: setup
	HF_HUB_OFFLINE=1 .venv/bin/python -m hindsight.demo

test: setup
	# The reinforcement-direction test needs qwen-1.5b (the 0.5B model's verdicts do not follow the facts).
	.venv/bin/hindsight models install qwen-1.5b
	HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q

lint: setup
	.venv/bin/ruff check hindsight tests eval bench
	.venv/bin/mypy hindsight
