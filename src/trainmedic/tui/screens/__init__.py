"""One module per screen; each screen is thin and calls the engine through the app."""
