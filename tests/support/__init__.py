"""Helpers the tests share: servers and proxies that stand in for the real world."""
