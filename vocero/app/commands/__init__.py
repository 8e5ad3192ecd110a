"""One-shot commands of ``vocero`` besides ``serve`` (README.md "Using it"): purge, review,
profiles, follow-up tick, schema, print-config. Each prints its result through :mod:`.output`."""
