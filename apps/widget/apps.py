from django.apps import AppConfig


class WidgetConfig(AppConfig):
    name = "apps.widget"
    label = "widget"
