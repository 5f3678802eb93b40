"""faithkit: make document-grounded dialogue models say only what their documents support, and measure it."""

__version__ = "0.1.0"
