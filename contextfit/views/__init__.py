"""Layer 5, views: charts, dashboard data, the command line.

The top layer below the ``contextfit`` facade: may import every layer.
"""
