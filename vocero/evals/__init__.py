"""``vocero eval``: conversation scenarios run against a real ``vocero serve`` (docs/eval.md).

Eval is tooling that drives the server from outside, like a client: it starts ``vocero serve``
as a subprocess and judges only what the wire, the MCP servers (through a recording tap) and the
operator API show. It never imports the planes that serve a session.
"""
