"""A tiny calculator: the example project of `./scripts/run` (it has two bugs the tests catch)."""


def add(a, b):
    return a + b


def subtract(a, b):
    return b - a


def average(values):
    """The mean of a list of numbers; 0 for an empty list."""
    return sum(values) / len(values)
