# Ported from Apache Flink Agents 0.3.1 (tag release-0.3.1), python/flink_agents/api/agents/tests/test_row_schema.py,
# under the Apache License, Version 2.0 (the notice below). Changed: imports only
# (flink_agents. -> actionjournal.flink_agents., its test modules -> tests.upstream.).
################################################################################
#  Licensed to the Apache Software Foundation (ASF) under one
#  or more contributor license agreements.  See the NOTICE file
#  distributed with this work for additional information
#  regarding copyright ownership.  The ASF licenses this file
#  to you under the Apache License, Version 2.0 (the
#  "License"); you may not use this file except in compliance
#  with the License.  You may obtain a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
#  Unless required by applicable law or agreed to in writing, software
#  distributed under the License is distributed on an "AS IS" BASIS,
#  WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
#  See the License for the specific language governing permissions and
# limitations under the License.
#################################################################################

from pyflink.common.typeinfo import BasicTypeInfo, RowTypeInfo

from actionjournal.flink_agents.api.agents.react_agent import OutputSchema


def test_output_schema_serializable() -> None:
    schema = OutputSchema(
        output_schema=RowTypeInfo(
            [BasicTypeInfo.INT_TYPE_INFO()],
            ["result"],
        )
    )

    json_data = schema.model_dump_json()

    deserialize_schema = OutputSchema.model_validate_json(json_data)
    assert schema == deserialize_schema
