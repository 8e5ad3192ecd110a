"""Realtime data plane: terminates the WebSocket, enforces envelope rules, paces audio."""
