"""The HTTP surface of the composition root: the operator API (docs/operators.md), the routes the
console needs, their request bodies and query parameters, operator authentication and security
headers."""
