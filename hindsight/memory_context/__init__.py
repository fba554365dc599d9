"""The context an agent sends each turn: working memory, the observation log and the memories recalled for the turn,
as one block ordered from the most stable to the least (docs/ARCHITECTURE.md, The context block)."""
