"""The service: ``asz collect`` running, its metrics, notifications, dashboard and deployment."""
