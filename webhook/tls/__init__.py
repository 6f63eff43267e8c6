"""The serving certificate: made (a CA and its certificate for the webhook's Service) and reloaded when its
files change. Below the app, which reports it; the server process serves from it."""
