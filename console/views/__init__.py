"""The console's pages (Django templates + htmx; live over the websocket of `console.consumers`)."""
