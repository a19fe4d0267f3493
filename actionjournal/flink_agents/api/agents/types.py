"""``OutputSchema``: the pydantic model a chat model's final answer is parsed into."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_serializer, model_validator

from actionjournal.durable.values import loaded_type, type_name


class OutputSchema(BaseModel):
    """Wraps a pydantic model class; journaled by the class's dotted name, which is looked
    up among loaded modules when read back (journal data never imports anything)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    output_schema: type[BaseModel]

    @model_serializer
    def _by_name(self) -> dict[str, Any]:
        return {"output_schema": {"class": type_name(self.output_schema)}}

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, data: Any) -> Any:
        schema = data.get("output_schema") if isinstance(data, dict) else None
        if isinstance(schema, dict):
            found = loaded_type(str(schema.get("class")))
            if not (isinstance(found, type) and issubclass(found, BaseModel)):
                raise ValueError(
                    f"output schema {schema.get('class')} is not defined in this process; "
                    "define it in a module the agent imports"
                )
            return {"output_schema": found}
        return data
