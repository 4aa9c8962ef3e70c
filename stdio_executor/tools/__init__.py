"""Built-in tools behind one small interface (``base.Tool``), loaded lazily by the catalog."""
