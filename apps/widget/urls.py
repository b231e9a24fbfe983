from django.urls import path, re_path

from apps.widget import views

app_name = "widget"
urlpatterns = [
    path("", views.home, name="home"),
    path("start", views.start, name="start"),
    path("w/<uuid:assistant_id>", views.widget, name="widget"),
    path("w/<uuid:assistant_id>/start", views.widget_start, name="widget-start"),
    path("w/<uuid:assistant_id>/resume", views.widget_resume, name="widget-resume"),
    path("c/<uuid:conversation_id>", views.conversation_page, name="conversation"),
    path("c/<uuid:conversation_id>/live", views.live, name="live"),
    path("c/<uuid:conversation_id>/send", views.send, name="send"),
    path("c/<uuid:conversation_id>/answer", views.answer, name="answer"),
    path("c/<uuid:conversation_id>/continue", views.continue_view, name="continue"),
    path("c/<uuid:conversation_id>/handoff", views.request_handoff, name="handoff"),
    path("c/<uuid:conversation_id>/handoff/details", views.handoff_details, name="handoff_details"),
    path("c/<uuid:conversation_id>/handoff/cancel", views.cancel_handoff, name="handoff_cancel"),
    path("c/<uuid:conversation_id>/team", views.team, name="team"),
    path("c/<uuid:conversation_id>/passages/<str:passage_id>", views.passage, name="passage"),
    path("c/<uuid:conversation_id>/memory/clear", views.clear_memory, name="clear-memory"),
    # Anything else under these prefixes is a link cut short or mistyped: a page for people, even
    # with DEBUG on, where Django would answer with its technical 404 page.
    re_path(r"^c/(?P<rest>.*)$", views.broken_link),
    re_path(r"^w/(?P<rest>.*)$", views.broken_widget_link),
]
