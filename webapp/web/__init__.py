"""The frame every area stands on: settings, request limits, security headers and CSRF, rate
limits, error pages, htmx helpers, the forms' base class and name rule, Jinja filters, URL
converters, the asset folders and the gunicorn server that ``tokenforge serve`` runs.

No blueprint lives here; the areas register theirs through ``webapp.app.create_app``.
"""
