"""Structured logging with redaction, and Prometheus metrics."""
