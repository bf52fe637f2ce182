"""contamlab: simulate, mitigate, measure and detect benchmark contamination in LLMs."""

__version__ = "0.1.0"
