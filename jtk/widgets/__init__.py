"""ipywidgets apps for the notebooks: one builder per app, pure update functions tested in tests/."""
