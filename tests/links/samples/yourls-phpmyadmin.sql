-- phpMyAdmin SQL Dump
-- version 5.2.1
-- https://www.phpmyadmin.net/
--
-- Host: localhost
-- Generation Time: Mar 01, 2024 at 10:00 AM

SET SQL_MODE = "NO_AUTO_VALUE_ON_ZERO";
START TRANSACTION;
SET time_zone = "+00:00";

-- --------------------------------------------------------

--
-- Table structure for table `yourls_url`
--

CREATE TABLE `yourls_url` (
  `keyword` varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  `url` text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  `title` text COLLATE utf8mb4_unicode_ci DEFAULT NULL,
  `timestamp` timestamp NOT NULL DEFAULT current_timestamp(),
  `ip` varchar(41) COLLATE utf8mb4_unicode_ci NOT NULL,
  `clicks` int(10) UNSIGNED NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

--
-- Dumping data for table `yourls_url`
--

INSERT INTO `yourls_url` (`keyword`, `url`, `title`, `timestamp`, `ip`, `clicks`) VALUES
('pma1', 'https://example.com/first', 'First, ''quoted'' title', '2024-02-29 23:59:59', '10.0.0.1', 12),
('pma2', 'https://example.com/second', 'Two\nlines', '2024-03-01 08:00:00', '10.0.0.2', 0);

--
-- Dumping data for table `yourls_options`
--

INSERT INTO `yourls_options` (`option_id`, `option_name`, `option_value`) VALUES
(1, 'version', '1.9.2'),
(2, 'next_id', '3');
COMMIT;
