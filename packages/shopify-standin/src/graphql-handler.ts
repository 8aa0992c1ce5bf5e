import {
  execute,
  type GraphQLError,
  type GraphQLSchema,
  getOperationAST,
  parse,
  validate,
} from "graphql";
import { queryCost } from "./query-cost.ts";
import type { StandInShop } from "./state.ts";

/** Shopify refuses any single query that asks for more than 1,000 points. */
export const MAX_QUERY_COST = 1_000;

export interface GraphqlRequest {
  query?: unknown;
  variables?: unknown;
  operationName?: unknown;
}

export interface GraphqlAnswer {
  status: 200 | 400 | 429;
  body: Record<string, unknown>;
  throttled: boolean;
}

const errorBody = (message: string, code?: string, extra: Record<string, unknown> = {}) => ({
  errors: [{ message, ...(code ? { extensions: { code, ...extra } } : {}) }],
});

const formatErrors = (errors: readonly GraphQLError[]) => errors.map((e) => e.toJSON());

/**
 * Runs one Admin GraphQL request for a shop the way Shopify meters it: the requested cost must
 * be in the bucket before anything runs (else THROTTLED, nothing charged), the unused part is
 * refunded after, and every answer carries `extensions.cost`.
 */
export async function runGraphql(
  schema: GraphQLSchema,
  shop: StandInShop,
  request: GraphqlRequest,
  options: { throttledStatus: 200 | 429 },
): Promise<GraphqlAnswer> {
  if (typeof request.query !== "string" || request.query.trim() === "") {
    return {
      status: 400,
      body: errorBody("Parameter Missing or Invalid: query"),
      throttled: false,
    };
  }
  let document: ReturnType<typeof parse>;
  try {
    document = parse(request.query);
  } catch (error) {
    return {
      status: 200,
      body: { errors: formatErrors([error as GraphQLError]) },
      throttled: false,
    };
  }
  const invalid = validate(schema, document);
  if (invalid.length > 0) {
    return { status: 200, body: { errors: formatErrors(invalid) }, throttled: false };
  }
  const operationName = typeof request.operationName === "string" ? request.operationName : null;
  const operation = getOperationAST(document, operationName);
  if (!operation) {
    return { status: 200, body: errorBody("An operation name is required"), throttled: false };
  }
  const variables =
    request.variables !== null && typeof request.variables === "object"
      ? (request.variables as Record<string, unknown>)
      : {};

  const requested = queryCost(schema, document, operation, variables);
  if (requested > MAX_QUERY_COST) {
    return {
      status: 200,
      body: errorBody(
        `Query cost is ${requested}, which exceeds the single query max cost limit (${MAX_QUERY_COST}).`,
        "MAX_COST_EXCEEDED",
        { cost: requested, maxCost: MAX_QUERY_COST },
      ),
      throttled: false,
    };
  }
  if (!shop.bucket.take(requested)) {
    return {
      status: options.throttledStatus,
      body: {
        ...errorBody("Throttled", "THROTTLED", {
          documentation: "https://shopify.dev/api/usage/rate-limits",
        }),
        extensions: {
          cost: {
            requestedQueryCost: requested,
            actualQueryCost: null,
            throttleStatus: shop.bucket.status(),
          },
        },
      },
      throttled: true,
    };
  }
  const result = await execute({
    schema,
    document,
    operationName,
    variableValues: variables,
    contextValue: { shop },
  });
  const actual =
    operation.operation === "mutation"
      ? requested
      : queryCost(schema, document, operation, variables, result.data ?? null);
  shop.bucket.refund(Math.max(0, requested - actual));
  return {
    status: 200,
    body: {
      ...(result.errors ? { errors: formatErrors(result.errors) } : {}),
      data: result.data ?? null,
      extensions: {
        cost: {
          requestedQueryCost: requested,
          actualQueryCost: actual,
          throttleStatus: shop.bucket.status(),
        },
      },
    },
    throttled: false,
  };
}
