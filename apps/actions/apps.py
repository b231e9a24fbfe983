from django.apps import AppConfig


class ActionsConfig(AppConfig):
    name = "apps.actions"
    label = "actions"
