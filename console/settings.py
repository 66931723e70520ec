"""Django settings for the Flowdeck project.

Configuration comes from the environment: `DATABASE_URL` (default: a SQLite file in the project folder,
the embedded default), `FLOWDECK_SECRET_KEY`, `FLOWDECK_DEBUG`, `FLOWDECK_ALLOWED_HOSTS`.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get(
    "FLOWDECK_SECRET_KEY", "flowdeck-development-key-change-me-in-production-0123456789"
)
DEBUG = os.environ.get("FLOWDECK_DEBUG", "0") == "1"
ALLOWED_HOSTS = os.environ.get("FLOWDECK_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "store.django.apps.FlowStoreConfig",
    "console.apps.ConsoleConfig",
    "examples.fulfilment.apps.FulfilmentConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "console.middleware.ApiGuard",
    "console.middleware.ImplausibleSessionCookie",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "console.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
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

WSGI_APPLICATION = None
ASGI_APPLICATION = "console.asgi.application"


def _database(url: str) -> dict[str, object]:
    # Request threads close their connection when the request ends (under ASGI each sync_to_async thread
    # would otherwise keep one open); the store's own thread pool keeps its connections for its lifetime.
    config: dict[str, object] = dict(dj_database_url.parse(url, conn_max_age=0))
    if config["ENGINE"] == "django.db.backends.sqlite3":
        # WAL lets readers run beside the one writer; IMMEDIATE takes the write lock at BEGIN, so two
        # processes never both read-then-upgrade and deadlock (SQLite's SQLITE_BUSY on upgrade).
        config["OPTIONS"] = {
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "timeout": 30,
        }
    return config


DATABASE_URL = os.environ.get("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}")
DATABASES = {"default": _database(DATABASE_URL)}

AUTH_PASSWORD_VALIDATORS: list[dict[str, str]] = []

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGIN_URL = "/login/"

CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("FLOWDECK_LOG_LEVEL", "WARNING")},
    "loggers": {
        "engine": {"level": os.environ.get("FLOWDECK_LOG_LEVEL", "INFO"), "propagate": True},
        "console": {"level": os.environ.get("FLOWDECK_LOG_LEVEL", "INFO"), "propagate": True},
    },
}

# Modules holding flows, besides every installed app's `flows.py`.
FLOWDECK_FLOW_MODULES: list[str] = []
