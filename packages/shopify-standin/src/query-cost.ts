import {
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  GraphQLList,
  type GraphQLSchema,
  getNamedType,
  getNullableType,
  isCompositeType,
  isObjectType,
  isUnionType,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
  valueFromASTUntyped,
} from "graphql";

/**
 * Shopify's query cost rules (shopify.dev "API rate limits"): scalars and enums cost 0, an object
 * costs 1, a connection costs 2 plus its page size times the cost of one node, a list with a
 * `first` argument that many times its element, a mutation 10. The requested cost uses the
 * `first` arguments; the actual cost counts what came back.
 */
export function queryCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown>,
  data?: unknown,
): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of document.definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  }
  const root =
    operation.operation === "mutation" ? schema.getMutationType() : schema.getQueryType();
  if (!root) return 0;

  const fieldsOf = (set: SelectionSetNode, type: GraphQLCompositeType): FieldNode[] => {
    const out: FieldNode[] = [];
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) out.push(sel);
      else if (sel.kind === Kind.INLINE_FRAGMENT) out.push(...fieldsOf(sel.selectionSet, type));
      else {
        const fragment = fragments.get(sel.name.value);
        if (fragment) out.push(...fieldsOf(fragment.selectionSet, type));
      }
    }
    return out;
  };

  const argument = (field: FieldNode, name: string): unknown => {
    const arg = field.arguments?.find((a) => a.name.value === name);
    return arg ? valueFromASTUntyped(arg.value, variables) : undefined;
  };

  const selectionCost = (
    set: SelectionSetNode,
    type: GraphQLCompositeType,
    value: unknown,
  ): number => {
    let total = 0;
    const fields = isUnionType(type) ? {} : type.getFields();
    for (const field of fieldsOf(set, type)) {
      const def = fields[field.name.value];
      if (!def || !field.selectionSet) continue;
      const named = getNamedType(def.type);
      if (!isCompositeType(named)) continue;
      const key = field.alias?.value ?? field.name.value;
      const child =
        value === undefined ? undefined : (value as Record<string, unknown> | null)?.[key];
      if (value !== undefined && (child === null || child === undefined)) continue;
      const first = Number(argument(field, "first") ?? argument(field, "last") ?? 1);
      if (isObjectType(named) && named.name.endsWith("Connection")) {
        const nodeField = fieldsOf(field.selectionSet, named).find(
          (f) => f.name.value === "nodes" || f.name.value === "edges",
        );
        let nodes = 0;
        if (nodeField?.selectionSet) {
          const nodeType = named.getFields()[nodeField.name.value];
          const itemType = nodeType ? getNamedType(nodeType.type) : undefined;
          if (itemType && isCompositeType(itemType)) {
            const items =
              child === undefined
                ? undefined
                : ((child as Record<string, unknown>)[
                    nodeField.alias?.value ?? nodeField.name.value
                  ] as unknown[]);
            if (items === undefined) {
              nodes = first * (1 + selectionCost(nodeField.selectionSet, itemType, undefined));
            } else {
              for (const item of items)
                nodes += 1 + selectionCost(nodeField.selectionSet, itemType, item);
            }
          }
        }
        total += 2 + nodes;
      } else if (getNullableType(def.type) instanceof GraphQLList) {
        if (child === undefined)
          total += first * (1 + selectionCost(field.selectionSet, named, undefined));
        else
          for (const item of child as unknown[])
            total += 1 + selectionCost(field.selectionSet, named, item);
      } else {
        total += 1 + selectionCost(field.selectionSet, named, child);
      }
    }
    return total;
  };

  if (operation.operation === "mutation") {
    return fieldsOf(operation.selectionSet, root).length * 10;
  }
  return selectionCost(operation.selectionSet, root, data);
}
