"""What the tests share: helpers, fixtures' building blocks, fake servers. Never a test module."""
