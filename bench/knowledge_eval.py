"""The help centre of a fictional online shop (Northwind Supply: clothes, shoes, home goods) and questions phrased
the way customers write in a chat box, each paired with the article that answers it; bench/knowledge.py measures
recall@5 on it."""

from __future__ import annotations

ARTICLES: dict[str, str] = {
    "Returns": """# Returns

## Our returns window
You can return most items within 30 days of the date your order was delivered. Items must be unworn,
unwashed and in their original packaging with the tags still attached. Please try shoes on indoors only:
we can't accept footwear with marks on the soles.

## How to send something back
1. Sign in, open **Orders** and choose **Start a return** next to the item.
2. Pick a reason, then print the prepaid label or save the QR code to show at the counter.
3. Drop the package at any Royal Mail post office or InPost locker within 7 days of starting the return.

Returns by post cost £2.95, which is taken off the amount you get back. Handing items in at one of our
stores is free.

## Items we can't take back
For hygiene reasons we can't accept earrings, underwear, swimwear without its hygiene liner, or opened
pillows and duvets. Personalised items, such as monogrammed towels, are non-returnable, as is anything
marked "final sale" at checkout.""",
    "Refunds": """# Refunds

## When will I get my money?
Once your return reaches our warehouse in Leicester, we inspect it within 3 working days and email you to
confirm. The money is then sent back to the original payment method. Banks usually take a further 3-5
working days to show it on your statement; PayPal usually shows it within 24 hours.

## How much you get back
You receive the full price of the items you sent back. The original delivery charge is only reimbursed if
you return the whole order, or if the item was faulty or we sent the wrong thing. The £2.95 postal fee is
deducted unless the item was faulty.

## Gift card and Klarna purchases
If you paid with a gift card, the amount goes onto a new e-gift card. If you paid with Klarna, we notify
Klarna the same day and they reduce or cancel your remaining instalments, so you won't be asked to pay for
things you've returned.

## Still waiting?
If it has been more than 10 working days since our confirmation email, send us your order number and the
return tracking reference through the contact form and we'll chase it with our payments team.""",
    "Exchanges": """# Exchanges

## Swapping for a different size or colour
Need a bigger size, or prefer the navy to the black? You can exchange any full-price item within 30 days
of delivery, free of charge. In **Orders**, choose **Exchange** instead of Return and pick the new size or
colour. We reserve the replacement for you as soon as you request it.

## What happens next
Post the original back using the free exchange label. We dispatch the replacement as soon as the carrier
scans your parcel, so you don't have to wait for it to reach our warehouse. If you don't send the original
within 14 days, we charge the card you paid with for the replacement.

## Things to know
- Exchanges are for the same product only. For a different product, return the first one and place a new
  order.
- If the new size is out of stock, we'll offer your money back instead.
- Each item can be exchanged once.""",
    "Delivery times": """# Delivery times

## How long will my order take?
- **Standard**: £3.95, free over £50, 3-5 working days.
- **Express**: £6.95, 1-2 working days.
- **Next day**: £8.95. Order before 8pm Monday to Thursday for the following day, or before 6pm on Friday
  for Saturday.

Working days are Monday to Friday. We don't deliver on Sundays or bank holidays.

## Furniture and large items
Sofas, beds, wardrobes and rugs over 2 metres travel with our two-person crew and take 7-10 working days.
The crew will text you to book a two-hour slot and will bring the item to the room of your choice.

## Busy periods
During Black Friday week and the two weeks before Christmas, please allow an extra 2 working days. Our
last guaranteed dates for Christmas are published on the homepage from 1 November.""",
    "International shipping": """# International shipping

## Where we deliver
We ship to the UK, every EU country, Norway, Switzerland, the USA, Canada, Australia and New Zealand. We
can't send to PO boxes or forces (BFPO) addresses outside the UK. Furniture and anything over 30 kg can
only be sent within the UK.

## Costs and times
- EU: €9.95, 4-7 working days, free on orders over €120.
- Norway and Switzerland: €19.95, 5-8 working days.
- USA and Canada: $14.95, 5-8 working days.
- Australia and New Zealand: A$24.95, 7-12 working days.

## Customs, duties and taxes
For EU countries we pay the import VAT and duties, so the price at checkout is the final price. For
Norway, Switzerland, Canada, Australia, New Zealand and US orders over $800, your local customs office may
charge import duty or tax when the parcel arrives, and DHL will ask you to pay it before handing it over.
We can't reimburse these charges.""",
    "Order tracking": """# Order tracking

## Following your order
As soon as your parcel leaves our warehouse we send a dispatch email and text with a tracking link. You
can also sign in and open **Orders** to see its status: Received, Packed, Dispatched, Out for delivery and
Delivered.

## Which courier has my parcel?
Standard orders go with Evri. Express and next-day orders go with DPD, who send a one-hour delivery window
on the morning of delivery. International orders travel with DHL. You can tell from the tracking number:
Evri numbers start with H, DPD numbers with 15 and DHL numbers with JD.

## Tracking not updating?
The first scan can take up to 24 hours to appear after the dispatch email, because the courier only scans
the parcel when it reaches their depot. If there has been no movement for 3 working days, contact us and
we'll open an enquiry with the courier.""",
    "Missing parcel": """# Missing parcel

## Tracking says delivered but nothing arrived
First check with your neighbours, your building's post room and any safe place you chose at checkout. DPD
and Evri usually take a photo of where they left the parcel: open the tracking link and look for the
proof of delivery. Drivers sometimes mark a parcel as delivered a few hours early, so wait until the end of
the day.

## Reporting it to us
If it still hasn't turned up 48 hours after the delivered scan, fill in the lost parcel form with your
order number. We'll investigate with the courier, which takes up to 5 working days, and then send a
replacement or refund you in full. We may ask you to sign a short declaration that it wasn't received.

## Parcels lost in transit
If tracking hasn't moved for 10 working days (15 for international orders), the courier treats the
parcel as lost. We'll reship your order free of charge at express speed, stock allowing.""",
    "Cancelling an order": """# Cancelling an order

## Within 30 minutes
You can cancel an order yourself within 30 minutes of placing it. Go to **Orders**, select the order and
choose **Cancel order**. After 30 minutes the order is released to our warehouse and the button
disappears. You can also remove single items from an order in the same 30 minutes.

## After that
Once the warehouse has started picking your order we can't stop it. Either let the parcel arrive and
return it in the usual way, or refuse it at the door and it will come back to us automatically. Money for
cancelled items is released to your card within 2-3 working days; a pending amount on your banking app
will drop off on its own.

## Made-to-order furniture
Custom sofas and made-to-measure curtains can be cancelled free within 14 days of ordering. After that we
charge 25% of the price, because production has started with your chosen fabric.""",
    "Changing your address": """# Changing your address

## Updating the address on an order
You can edit the delivery address in **Orders** until the order shows as Packed. After that we can't
change it from our side, but the courier usually can: DPD's text message has a link to redirect the parcel
to a neighbour, a DPD Pickup shop or another day, and the Evri app lets you choose a safe place or a nearby
ParcelShop. Couriers can't send a parcel to a completely different town.

## Saved addresses in your account
Go to **Account > Addresses** to add, edit or delete saved addresses, and to choose a default for
deliveries and one for billing. You can save up to 10.

## Moving house?
Remember to update your billing address with your card issuer too, and then here. Our checkout compares
the billing address you enter with the one your bank holds.""",
    "Payment methods": """# Payment methods

## What we accept
Visa, Mastercard, American Express and Maestro; PayPal; Apple Pay and Google Pay; Northwind gift cards; and
Klarna. We don't accept cash on delivery, cheques or bank transfer for personal orders.

## When you're charged
We authorise the amount when you place your order and take the payment when it's dispatched. If your order
ships in several parcels, you'll see a separate charge for each parcel, adding up to your order total.

## Why was my payment declined?
Most declined payments are caused by a billing address or postcode that doesn't match your bank's records,
3D Secure verification timing out in your banking app, or an expired card. Check your details and try
again, or use another method. We can't see why a bank declined a transaction; your bank can tell you.

## Currency
Prices on our UK site are in pounds sterling. On our EU site you pay in euros, so your card won't add a
foreign exchange fee.""",
    "Pay later with Klarna": """# Pay later with Klarna

## How it works
Choose Klarna at checkout to split your order into 3 interest-free payments. The first is taken on the day
your order is dispatched and the next two 30 days apart. Or choose **Pay in 30 days** to try things on at
home before paying anything. Klarna is available on orders from £35 to £1,000 delivered to a UK address.

## Approval
Klarna makes a soft search when you apply. It doesn't affect your credit score and isn't visible to other
lenders. If Klarna says no, we can't override their decision, so please choose another way to pay.

## Managing your instalments
Manage your schedule, change the card used or pay early in the Klarna app. Klarna charges a late fee of up
to £5 if a payment fails. Questions about your Klarna statement should go to Klarna's customer service,
because we can't see your Klarna account.""",
    "Gift cards": """# Gift cards

## Buying a gift card
Physical gift cards come in a card wallet, range from £10 to £250 and are posted free by first class post.
E-gift cards can be any amount from £5 to £500 and are emailed on the date you choose, with your personal
message.

## Spending it
Enter the 16-digit card number and 4-digit PIN at checkout, or show the card at the till in any of our
stores. You can use up to 3 gift cards on one order and pay the rest by card. Gift cards can't be used to
buy other gift cards.

## Balance and expiry
Gift cards are valid for 24 months from purchase, and every time you spend on one it's extended for another
24 months. Check your balance on the gift card page of our website. A lost card can only be replaced if you
have the order confirmation or till receipt for it.""",
    "Discount codes": """# Discount codes

## Using a promo code
Type the code into the **Promo code** box in your basket and press **Apply**. The saving is shown before
you pay. Only one code can be used per order.

## Why isn't my code working?
- It has expired: most codes are valid for 14 days.
- There's a minimum spend, usually £40, counted after any sale reductions.
- Your basket contains reduced items. Codes don't apply to sale items, gift cards, or Nike, Birkenstock and
  Le Creuset products.
- It's a single-use welcome code that has already been used on your account.
- Codes are case-sensitive. If you copied it, check for a space at the end.

## Forgot to add it?
We can't apply a code to an order once it's placed. If the order hasn't been packed yet, cancel it within
30 minutes and order again with the code.""",
    "Sizing guide": """# Sizing guide

## Clothing
Women's sizes run from 6 to 22 and men's from XS to XXL. Measure your chest, waist and hips over light
clothing and compare them to the chart on each product page. If you're between two sizes, choose the
larger for jackets and knitwear and the smaller for jeans, because our denim gives by about half a size.

## Shoes
Shoes are in UK sizes, with EU and US conversions on the chart. Our own-brand trainers run slightly small,
so we suggest going half a size up. Boots come in standard (E) and wide (G) fittings.

## Fit notes
Every product page has a **Fit** section written by our fitting team, with the model's height and the
size they're wearing. Reviews also show whether customers found an item small, true to size or large.""",
    "Warranty and repairs": """# Warranty and repairs

## What's covered
Home electricals such as kettles, toasters and lamps come with a 2-year manufacturer's guarantee. Our
cast-iron cookware and Northwind Workwear boots are guaranteed for 5 years against manufacturing defects.
Normal wear and tear, accidental damage and misuse aren't covered.

## Making a claim
Send us your order number, a description of the fault and photos or a short video through the contact
form. If the item is covered, we'll arrange a repair, a replacement or, if neither is possible, a refund.
Keep your proof of purchase.

## Our repair service
Our workshop in Leicester also does paid repairs outside the guarantee: resoling leather boots from £45,
replacing zips on coats and jackets from £18, and reupholstery quotes for our sofas. Book from the Repairs
page and we'll send you a free postage bag. Most repairs take 3 weeks.""",
    "Damaged or faulty items": """# Damaged or faulty items

## Arrived broken or not working?
We're sorry! If something arrives damaged, doesn't work out of the box, or isn't what you ordered, let us
know within 14 days of delivery. Please take photos of the item and of the outer packaging, including any
dents or tears in the box.

## What we'll do
Send the photos with your order number through the contact form. For smaller items we normally send a
replacement straight away, and you don't need to send the broken one back. For furniture and large items,
we'll arrange a collection and a new delivery at no cost, or a partial refund if you'd rather keep it
despite a small mark.

## Wrong item received
If we've sent the wrong colour, size or product, we'll email a free label for the item you received and
dispatch the right one as soon as you tell us, without waiting for ours to come back.""",
    "Account and password": """# Account and password

## Resetting your password
Choose **Sign in**, then **Forgot password**, and enter your email address. The reset link is valid for 1
hour. If it doesn't arrive within 10 minutes, check your spam or promotions folder. After 5 failed sign-in
attempts your account is locked for 30 minutes for your security.

## Changing your email or details
Go to **Account > Personal details** to change your name, email address or phone number. We send a
confirmation link to a new email address before the change takes effect.

## Two-step verification
Turn on two-step verification in **Account > Security**. We'll text a 6-digit code to your phone each time
you sign in from a new device.

## Checking out as a guest
You don't need an account to order, but with one you can see all your orders in one place and start
returns online.""",
    "Newsletter and privacy": """# Newsletter and privacy

## Unsubscribing
Every marketing email has an **Unsubscribe** link at the bottom. You can also choose how often you hear
from us in **Account > Preferences**, and stop marketing texts by replying STOP. Changes can take up to 48
hours. Order and delivery messages are service messages and will still be sent.

## How we use your data
We use your details to process orders, prevent fraud and, if you've agreed, send personalised offers. We
never sell your data. Our privacy policy lists every partner we share data with, such as couriers and
Klarna.

## Your rights
You can ask for a copy of the personal data we hold about you, or ask us to erase it, by emailing
privacy@northwindsupply.co.uk. We respond within one month. Erasing your data also closes your account.

## Cookies
Change your cookie choices at any time from the **Cookie settings** link at the bottom of every page.""",
    "Click and collect": """# Click and collect

## How it works
Choose **Collect from store** at checkout and pick one of our 38 stores. It's free on orders over £25 and
£2.50 below that. We'll text and email you when it's ready, usually within 2 working days if you order
before 2pm.

## Picking it up
Bring the ready-to-collect email or text with your order number, plus photo ID if you paid by card.
Someone else can pick it up for you if you add their name at checkout. Go to the customer service desk;
furniture and large items are handed over at the loading bay at the back of the store.

## How long we hold it
We keep orders for 10 days. After that they go back to our warehouse and you're refunded, minus the
collection fee if you paid one.""",
    "Student discount": """# Student discount

## 15% off for students
Students in full-time education at a UK university or college get 15% off full-price items all year
round. Verify once through UNiDAYS with your student email address and you'll get a code to use online,
or a digital card to show in store.

## The rules
- Codes are single-use, so generate a new one in UNiDAYS for every order.
- It can't be combined with another promo code.
- It doesn't apply to sale items, gift cards or furniture.
- You need to verify again at the start of each academic year.

## Graduates
For a year after finishing your course you can claim 10% off through the UNiDAYS Graduate programme.""",
    "Price match": """# Price match

## Found it cheaper?
If you find an identical item (same brand, model, colour and size) cheaper at one of these UK retailers,
we'll match the price: John Lewis, Next, Marks & Spencer, Dunelm, Schuh and ASOS. The item must be in
stock there, and we compare prices including delivery.

## How to claim
Before you order, send us a link to the competitor's page through live chat. We'll check it and give you
a single-use code for the difference. If you've already bought, we can match within 7 days of your
purchase and refund the difference.

## What we don't match
Marketplace sellers (Amazon Marketplace, eBay), outlet stores, clearance prices, member-only prices and
flash sales lasting less than 24 hours.

## When our own price drops
If we reduce the price of something within 7 days of you buying it, we'll refund the difference too. Just
ask us with your order number.""",
    "Care instructions": """# Care instructions

## Read the label first
Always follow the care label sewn into the side seam. Washing at a lower temperature than shown is fine;
a higher one can shrink wool and fade colours.

## Wool and cashmere
Hand wash in cool water with a wool detergent, or use your machine's wool cycle at 30C. Never tumble dry.
Roll the garment in a towel to press out water, then dry it flat away from radiators. Store knitwear
folded, not on hangers, and use cedar blocks to keep moths away.

## Leather and suede shoes
Wipe leather with a damp cloth and use a conditioner every few months. Treat suede with a protector spray
before first wear and brush it once it's dry. Stuff wet shoes with newspaper and let them dry naturally,
never next to a heater.

## Linen and cotton bedding
Wash at 40C before first use to soften it. Linen creases naturally; line dry and iron while slightly
damp.""",
    "Bulk and business orders": """# Bulk and business orders

## Ordering in quantity
If you're kitting out a team, hotel, restaurant or office, our business team can help with orders of 20
or more of the same item, or over £1,000 in total. Trade pricing is tiered: 10% off from £1,000 and 15%
off from £5,000.

## Embroidery and branding
We can add your logo to workwear, fleeces, aprons and towels. Setup costs £35 per design and embroidery
from £4.50 per item. Allow 15 working days for production after you approve the digital proof.

## Invoices and credit accounts
We issue a VAT invoice with every business delivery and accept bank transfer (BACS). Registered companies
can apply for a 30-day credit account after their first two orders. Email business@northwindsupply.co.uk
with your company number and a list of what you need, and we'll reply with a quote within 2 working
days.""",
    "Loyalty points": """# Loyalty points

## Northwind Rewards
Join Northwind Rewards for free from your account. You earn 1 point for every £1 spent online or in store,
and double points in your birthday month. Points appear 30 days after purchase, once the returns window
has closed.

## Redeeming
Every 200 points turn into a £5 voucher, which we email to you automatically. Vouchers are valid for 6
months and can be used together with a promo code.

## Gold tier
Spend over £500 in a calendar year to reach Gold: free next-day delivery, early access to our sales and an
extra 10% off in your birthday month. Gold status lasts until the end of the following year.

## Expiry
Points expire if you don't make a purchase for 12 months. We'll email you a month before they do.""",
    "Contacting us": """# Contacting us

## Live chat and phone
Live chat is open 8am-10pm every day and is the quickest way to reach us. You can call 0330 123 4567
Monday to Friday 9am-6pm and Saturday 9am-5pm; calls cost the same as a local call. We're closed on
Sundays and bank holidays.

## Email and the contact form
Use the contact form on this page and choose a topic so your message reaches the right team. We reply
within 24 hours. Please include your order number if you have one.

## Complaints
If you're unhappy with how we've handled something, ask for your case to be escalated to a team leader.
We aim to resolve complaints within 8 weeks; after that you can refer it to the Retail Ombudsman.

## Head office
Northwind Supply Ltd, 4 Meridian Way, Leicester LE19 1WZ. We can't accept returns or collections at this
address.""",
    "Back in stock": """# Back in stock

## Sold out in your size?
Select the size and tap **Notify me**. We'll email you once, as soon as it's available again. We can't
reserve it for you, so order quickly. Most bestsellers are restocked every 4-6 weeks; limited
collaborations are not restocked.

## Pre-orders
Some items show **Pre-order** with an expected dispatch date. We take payment when you order and send the
item as soon as it arrives at our warehouse. If the date slips by more than 2 weeks we'll email you.

## Stock in our shops
Use **Check store stock** on the product page to see which of our shops have your size today. Stock levels
update every hour, so call the shop before a long trip.""",
}

# (question as a customer would type it, title of the article that answers it)
QUESTIONS: list[tuple[str, str]] = [
    ("how do i send back a jacket that doesnt fit", "Returns"),
    ("ordered 3 dresses to try on, want to keep one and get rid of the other two, what do i do", "Returns"),
    ("do you take back earings", "Returns"),
    ("wheres the prepaid lable for posting stuff back", "Returns"),
    ("sent my parcel back last week when do i get my money", "Refunds"),
    ("will i get the shipping charge back as well", "Refunds"),
    ("still no refnd after 2 weeks??", "Refunds"),
    ("paid with klarna and sent everything back, do i still have to keep paying them", "Refunds"),
    ("can I swap these trainers for a bigger size", "Exchanges"),
    ("i picked black but actually want the olive version of the same hoodie, can you switch it", "Exchanges"),
    ("do i need to wait for you to recieve the old one before you post the new size", "Exchanges"),
    ("how long till my order gets here", "Delivery times"),
    ("if i order tonight could it come saturday", "Delivery times"),
    ("delivary to leeds how many days", "Delivery times"),
    ("whats the latest i can order to get it tomorrow", "Delivery times"),
    ("do you post to ireland", "International shipping"),
    ("will i have to pay import tax sending to switzerland", "International shipping"),
    ("can you ship to the states", "International shipping"),
    ("where is my stuff, ordered on monday", "Order tracking"),
    ("which company is bringing my order", "Order tracking"),
    ("the link in the email hasnt changed since yesterday, is it actually moving", "Order tracking"),
    ("my parcel never showed up", "Missing parcel"),
    ("says its been delivered but theres nothing at my door", "Missing parcel"),
    (
        "hi there so i ordered a load of stuff for my daughters birthday party last thursday and it was all meant "
        "to come together, the app says it was handed over at 2.14pm but we were in all day and nobody knocked, "
        "the neighbours havent seen it either. what can i do",
        "Missing parcel",
    ),
    ("cancel order?", "Cancelling an order"),
    ("i ordered the wrong thing 10 mins ago can i stop it", "Cancelling an order"),
    ("custom couch i ordered 3 weeks ago, changed my mind, do i have to pay anything", "Cancelling an order"),
    ("i put my old flat as where to send it, can i fix that", "Changing your address"),
    ("moving next week how do i update my saved adress", "Changing your address"),
    ("can i get the dpd driver to leave it at my work instead", "Changing your address"),
    ("do u take paypal", "Payment methods"),
    ("my card keeps getting rejected at checkout", "Payment methods"),
    ("why have i been charged twice for one order", "Payment methods"),
    ("can i spread the cost over a few months", "Pay later with Klarna"),
    ("is there a buy now pay later option", "Pay later with Klarna"),
    ("will splitting the payment hurt my credit rating", "Pay later with Klarna"),
    ("my nan gave me a gift voucher for christmas how do i use it on the website", "Gift cards"),
    (
        "so I'm planning a surprise for my best friend, she's obsessed with your homeware, and I want to send her "
        "something she can spend on whatever she likes, emailed to her on the day itself if possible",
        "Gift cards",
    ),
    ("how do i see whats left on the card my mum gave me", "Gift cards"),
    ("the 20% off code from your email wont go through", "Discount codes"),
    ("forgot to put my voucher code in before paying, can you take it off now", "Discount codes"),
    ("can i use two codes on one order", "Discount codes"),
    ("what size should i get, im usually a 12 in other shops", "Sizing guide"),
    ("do your trainers come up small", "Sizing guide"),
    ("do you do wide fit boots", "Sizing guide"),
    ("kettel stopped working after 8 months", "Warranty and repairs"),
    ("can you fix the soles on my boots, bought them 3 years ago", "Warranty and repairs"),
    (
        "Hello, I bought a wool coat from you last autumn and honestly love it, but after a couple of months the "
        "zip has come away from the fabric and now it wont close at all. My husband thinks it should be covered. "
        "Can you sort it or do I have to pay?",
        "Warranty and repairs",
    ),
    ("the mug came smashed in the box", "Damaged or faulty items"),
    ("you sent me a medium instead of the large i ordered", "Damaged or faulty items"),
    ("table arrived with a big scratch on the top", "Damaged or faulty items"),
    ("forgot my pasword", "Account and password"),
    ("it says my account is locked", "Account and password"),
    ("how do i change the email i log in with", "Account and password"),
    ("stop sending me emails", "Newsletter and privacy"),
    ("too many texts from you, how do i turn them off", "Newsletter and privacy"),
    ("i want you to wipe all the info you have on me", "Newsletter and privacy"),
    ("can i pick it up from a shop instead of getting it delivered", "Click and collect"),
    ("my husband is going to get my order from the store for me is that ok", "Click and collect"),
    ("how long will you keep my order at the shop", "Click and collect"),
    ("im at uni, any deals?", "Student discount"),
    ("just graduated, can i still get money off", "Student discount"),
    ("saw the same lamp for less at john lewis", "Price match"),
    ("bought a rug last week and now its cheaper on your site, can i get the difference back", "Price match"),
    ("how to wash a cashmere jumper without shrinking it", "Care instructions"),
    ("my suede boots got soked in the rain what do i do", "Care instructions"),
    ("do i need to wash new sheets before using them", "Care instructions"),
    ("we need 40 fleeces with our company logo on for staff", "Bulk and business orders"),
    (
        "Hi, I manage a small boutique hotel in the Lake District and we're refreshing all 22 rooms this spring, "
        "we'd want towels and bedding in quantity, is there any sort of trade pricing and can you invoice us",
        "Bulk and business orders",
    ),
    ("do i get anything back for shopping with you a lot", "Loyalty points"),
    ("where did my pionts go, had loads last year", "Loyalty points"),
    ("how do i get to gold", "Loyalty points"),
    ("can i speak to a real person on the phone", "Contacting us"),
    ("what hours can i message someone", "Contacting us"),
    ("i want to make a formal complaint about how ive been treated", "Contacting us"),
    ("the boots i want dont have a 7 left, will you get more", "Back in stock"),
    ("can i get told when the green one is available again", "Back in stock"),
    ("is the blue lamp in the manchester shop today", "Back in stock"),
]
