from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("api", "0001_initial")]

    operations = [
        migrations.AlterField(
            model_name="apitoken",
            name="scope",
            field=models.CharField(
                choices=[("read", "read (viewer)"), ("operate", "operate (operator)"),
                         ("write", "write (admin)")],
                default="read",
                max_length=8,
            ),
        ),
    ]
