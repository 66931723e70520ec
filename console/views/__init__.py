"""The console's pages (Django templates + htmx; live over the websocket of `flowdeck.console.consumers`)."""
