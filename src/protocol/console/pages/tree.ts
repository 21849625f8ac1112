/**
 * The fork tree: sandboxes as a forest by `parentId`. A sandbox whose parent is not in the list (ended,
 * or in a namespace the caller does not see) is a root that names its parent.
 */

export interface TreeInput {
  id: string;
  parentId: string | null;
  createdAt: string;
}

export interface TreeNode<T extends TreeInput> {
  sandbox: T;
  /** The parent's id when the parent is not in the list. */
  missingParent: string | null;
  children: TreeNode<T>[];
}

/** Build the forest; siblings and roots in creation order. */
export function buildForest<T extends TreeInput>(sandboxes: readonly T[]): TreeNode<T>[] {
  const sorted = [...sandboxes].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  const nodes = new Map<string, TreeNode<T>>();
  for (const s of sorted) nodes.set(s.id, { sandbox: s, missingParent: null, children: [] });
  const roots: TreeNode<T>[] = [];
  for (const s of sorted) {
    const node = nodes.get(s.id) as TreeNode<T>;
    const parent = s.parentId === null ? undefined : nodes.get(s.parentId);
    if (parent && parent !== node) parent.children.push(node);
    else {
      node.missingParent = s.parentId;
      roots.push(node);
    }
  }
  return roots;
}
