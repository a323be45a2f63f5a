"""fw_magics.widgets: the widget layer (installed from the top-level widgets/ folder)."""
