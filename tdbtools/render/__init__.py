"""Pictures: matplotlib plots, and pyvista 3-D scenes (heavy imports stay inside functions)."""
