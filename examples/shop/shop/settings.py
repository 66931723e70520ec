"""Settings of the shop: a Django project of its own that adds Flowdeck to itself.

What Flowdeck asks of a project is marked "Flowdeck" below: its two apps; with the include in
`shop/urls.py` and the websocket route in `shop/asgi.py`, that is all. No middleware of Flowdeck's: the
console's protections travel with its URLs (`flowdeck.console.gate`). Everything else is what
`startproject` writes. `DATABASE_URL` picks the database (a SQLite file beside this project by default);
the workers and the console read executions from the same database as the orders.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url

from flowdeck.console import csp

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ["SHOP_SECRET_KEY"]  # no fallback: a published key signs nobody's sessions
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "flowdeck.store.django.apps.FlowStoreConfig",  # Flowdeck: the store's tables
    # Flowdeck: the console (its templates and static files too), the API, the `flowdeck` and
    # `flowdeck_workers` commands
    "flowdeck.console.apps.ConsoleConfig",
    "orders",  # the shop's own app; its flows.py is found by Flowdeck's discovery
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "shop.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

ASGI_APPLICATION = "shop.asgi.application"

_database = dict(
    dj_database_url.parse(os.environ.get("DATABASE_URL", f"sqlite:///{BASE_DIR / 'shop.sqlite3'}"))
)
if _database["ENGINE"] == "django.db.backends.sqlite3":
    # The workers write from their own processes: WAL and IMMEDIATE keep SQLite's one writer orderly.
    _database["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "timeout": 30,
    }
DATABASES = {"default": _database}

FLOWDECK_CSP = csp.CONSOLE_POLICY  # optional: the console's default policy, on its own URLs only

USE_TZ = True
TIME_ZONE = "UTC"
STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
