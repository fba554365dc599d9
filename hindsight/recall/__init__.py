"""Recall: four retrieval channels, RRF fusion, reranking and token-budget packing."""
