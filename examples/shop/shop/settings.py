"""Settings of the shop: a Django project of its own that adds Flowdeck to itself.

What Flowdeck asks of a project is marked "Flowdeck" below: its apps, its middleware, its templates and
static folders, the login page, and the websocket routes (in `shop/asgi.py`). Everything else is what
`startproject` writes. `DATABASE_URL` picks the database (a SQLite file beside this project by default);
the workers and the console read executions from the same database as the orders.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url

from console import csp, paths

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
    "channels",  # Flowdeck: the console's live pages
    "store.django.apps.FlowStoreConfig",  # Flowdeck: the store's tables
    "console.apps.ConsoleConfig",  # Flowdeck: the console, the API and the `flow` and `runworkers` commands
    "orders",  # the shop's own app; its flows.py is found by Flowdeck's discovery
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "console.security.ContentSecurityPolicy",  # Flowdeck: the console's pages carry its CSP
    "console.middleware.ApiGuard",  # Flowdeck: the API's limits and its JSON errors
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "console.middleware.RefuseUnstorableText",  # Flowdeck: text no database could store is refused (400)
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "console.middleware.ErrorPageInRequestThread",  # Flowdeck: an async page's 404 keeps no connection open
]

ROOT_URLCONF = "shop.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [paths.TEMPLATES_DIR],  # Flowdeck: the console's pages
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

LOGIN_URL = "login"  # Flowdeck: the console's login page (by name, so it follows the /ops/ prefix)
FLOWDECK_CSP = csp.CONSOLE_POLICY  # Flowdeck: the default; a project with a policy of its own sets it here

USE_TZ = True
TIME_ZONE = "UTC"
STATIC_URL = "static/"
STATICFILES_DIRS = [paths.STATIC_DIR]  # Flowdeck: the console's scripts, styles and vendored assets
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
