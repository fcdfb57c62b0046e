"""The code under evaluation in the demo project."""


def greet(name: str) -> str:
    return f"Hello, {name}!"
