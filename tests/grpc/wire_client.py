"""An Envoy rate limit client that shares no code with ratewarden: Python grpcio.

It discovers the service through server reflection (no .proto file), builds the request and
response classes from the descriptors the server sends, and calls ShouldRateLimit and
grpc.health.v1.Health/Check. Usage: wire_client.py HOST:PORT REQUESTS_JSON; prints JSON.
"""
import json
import sys

import grpc
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

SERVICE = "envoy.service.ratelimit.v3.RateLimitService"


def unary(channel, pool, service, method):
    described = pool.FindServiceByName(service).FindMethodByName(method)
    request_class = message_factory.GetMessageClass(described.input_type)
    response_class = message_factory.GetMessageClass(described.output_type)
    call = channel.unary_unary(
        f"/{service}/{method}",
        request_serializer=request_class.SerializeToString,
        response_deserializer=response_class.FromString,
    )
    return request_class, call


def main():
    address, requests = sys.argv[1], json.loads(sys.argv[2])
    with grpc.insecure_channel(address) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        pool = DescriptorPool(database)
        out = {"services": sorted(database.get_services()), "responses": []}
        request_class, should_rate_limit = unary(channel, pool, SERVICE, "ShouldRateLimit")
        for body in requests:
            request = json_format.ParseDict(body, request_class())
            try:
                response = should_rate_limit(request, timeout=10)
                out["responses"].append(
                    json_format.MessageToDict(response, preserving_proto_field_name=True)
                )
            except grpc.RpcError as error:
                out["responses"].append({"error": error.code().name, "details": error.details()})
        check_class, check = unary(channel, pool, "grpc.health.v1.Health", "Check")
        health = check(check_class(service=SERVICE), timeout=10)
        out["health"] = json_format.MessageToDict(health)["status"]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
