"""Metacontroller hooks for NVCRE Jobs: request parsing, decisions and the HTTP app."""
