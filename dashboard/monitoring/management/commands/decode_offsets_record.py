"""``manage.py decode_offsets_record KEY_HEX [VALUE_HEX]``: one ``__consumer_offsets`` record."""

import json

from django.core.management.base import BaseCommand, CommandParser

from collectors.consumer_offsets import DecodeError, decode_record


class Command(BaseCommand):
    help = "Decode one record of Kafka's __consumer_offsets topic and print it as JSON."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("key_hex", help="the record key, as hex")
        parser.add_argument(
            "value_hex", nargs="?", help="the record value, as hex (omit it for a tombstone)"
        )

    def handle(self, *args, key_hex: str, value_hex: str | None, **options) -> None:
        try:
            key = bytes.fromhex(key_hex)
            value = None if value_hex is None else bytes.fromhex(value_hex)
        except ValueError as exc:
            self._fail(f"not hexadecimal: {exc}")
        try:
            record = decode_record(key, value)
        except DecodeError as exc:
            self._fail(f"cannot decode: {exc}")
        self.stdout.write(json.dumps(record, sort_keys=False))

    def _fail(self, message: str) -> None:
        self.stderr.write(f"decode_offsets_record: {message}")
        raise SystemExit(2)
