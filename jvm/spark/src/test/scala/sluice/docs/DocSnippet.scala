package sluice.docs

/**
 * A ```scala block of the docs as `DocSnippets` lists it: where it is (the line of its first line
 * of code), and what its marker says (`skip <why>`: not run; `idle <why>`: its queries may read
 * nothing).
 */
final case class DocSnippet(page: String, line: Int, skip: Option[String], idle: Option[String]) {
  def where: String = s"$page:$line"
}
