"""Conversation control plane: the session state machine, turns, generations, barge-in."""
