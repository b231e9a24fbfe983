from django.apps import AppConfig


class AgUiConfig(AppConfig):
    name = "apps.agui"
    label = "agui"
