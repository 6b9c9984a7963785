"""What the tests share: request builders (``requests``) and ``FakeReader``, the real podread Reader over
in-memory sources (``reader``)."""
