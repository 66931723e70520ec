"""User accounts: Django's `createsuperuser`, with the password validators applied to a password given in
`DJANGO_SUPERUSER_PASSWORD` too (Django checks only a typed one). Installed before `django.contrib.auth`,
so that its command is the one `manage.py createsuperuser` runs."""
