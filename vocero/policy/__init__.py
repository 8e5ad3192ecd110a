"""Policy plane: proposals, confirmations, evidence, the permit gate and durable execution."""
