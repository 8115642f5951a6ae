"""Abstract conformance suites that implementations opt into with one line.

They need pytest (and hypothesis), which are test dependencies: import these modules from tests
only, e.g. ``class TestMyStorage(StorageContract, MyStorageFixture): pass``.
"""
