contact-page
