"""The web view: ``asz serve``, its pages in a browser and as a service."""
