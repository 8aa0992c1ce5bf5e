import { buildSchema, type GraphQLFieldResolver, type GraphQLSchema, isObjectType } from "graphql";
import type { StandInShop } from "../state.ts";

/** What every resolver receives: the shop the access token belongs to. */
export interface StandInContext {
  shop: StandInShop;
}

export type Resolver = GraphQLFieldResolver<unknown, StandInContext, Record<string, unknown>>;

/**
 * One slice of the stand-in's Admin GraphQL schema: SDL (`extend type Query`, `extend type
 * Mutation`, its own types) and the resolvers of its fields, by type then field. Fields without
 * a resolver read the property of the same name.
 */
export interface SchemaModule {
  typeDefs: string;
  resolvers: Record<string, Record<string, Resolver>>;
}

/** Concatenates the modules' SDL, builds the schema and attaches their resolvers. */
export function buildStandInSchema(modules: SchemaModule[]): GraphQLSchema {
  const schema = buildSchema(modules.map((m) => m.typeDefs).join("\n"));
  for (const module of modules) {
    for (const [typeName, fields] of Object.entries(module.resolvers)) {
      const type = schema.getType(typeName);
      if (!isObjectType(type))
        throw new Error(`stand-in schema: ${typeName} is not an object type`);
      const defs = type.getFields();
      for (const [fieldName, resolve] of Object.entries(fields)) {
        const def = defs[fieldName];
        if (!def) throw new Error(`stand-in schema: ${typeName}.${fieldName} is not in the SDL`);
        def.resolve = resolve;
      }
    }
  }
  return schema;
}
