from django.apps import AppConfig


class StaffConfig(AppConfig):
    name = "apps.staff"
    label = "staff"
    default_auto_field = "django.db.models.BigAutoField"
