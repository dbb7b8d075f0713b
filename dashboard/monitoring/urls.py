from django.urls import path

from dashboard.monitoring import views

app_name = "monitoring"
urlpatterns = [
    path("", views.home, name="home"),
]
