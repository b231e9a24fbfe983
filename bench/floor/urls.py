from django.urls import path

from bench.floor import views

urlpatterns = [
    path("", views.home),
    path("start", views.start),
    path("c/<uuid:conversation_id>", views.page),
    path("c/<uuid:conversation_id>/send", views.send),
]
