"""What the app consists of: the team page at "/" and one page per role (role_pages()), held
together as a Site, and which page serves an API endpoint."""

from dataclasses import dataclass

from services.common import protocols


# One page per role: each role's page is a Blocks of its own, mounted at /<role>/, so
# the browser looks up a few dozen components per event and Gradio copies a few dozen blocks'
# config for each new session (its SessionState copies every block of its Blocks: 55-72 ms per
# session with every role in one Blocks, about 7 ms with one role's). "/" is the landing page
# and the study team's (Admin, Analysis); participant links that arrive there are sent on to
# their role's page by RoleRedirect before any page loads. The roles and their pages' titles are
# the registered protocols' (services/common/protocols.py), read when asked, so that a protocol
# registered after this module was imported has its page too.
def role_pages() -> dict[str, str]:
    """role -> its page's title, in the order the protocols registered them."""
    return {r: protocols.role(r).page_title for r in protocols.roles()}


@dataclass
class Site:
    team: object  # gr.Blocks at "/": the landing page, Admin and Analysis
    pages: dict  # role -> gr.Blocks mounted at /<role>/
    auth: object = None  # services.admin.auth.AdminAuth of the team page

    @property
    def blocks(self) -> list:
        return [self.team, *self.pages.values()]


def page_of_api(api_name: str) -> str:
    """The page that serves an API endpoint ("" for "/"): a tab's events ("receiver_submit",
    "da_feedback") are on the first role page that holds the tab; the participant calls every
    page has (view, consent, demographics) and the team's events are on "/"."""
    tab = api_name.lstrip("/").split("_", 1)[0]
    return next((role for role, tabs in protocols.role_tabs().items() if tab in tabs), "")
